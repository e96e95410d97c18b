from validators.cli import main

raise SystemExit(main())
