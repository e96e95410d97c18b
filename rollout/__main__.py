from rollout.cli import main

raise SystemExit(main())
