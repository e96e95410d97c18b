from validators.manifest.cli import main

raise SystemExit(main())
