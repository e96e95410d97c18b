from generators.cli import main

raise SystemExit(main())
