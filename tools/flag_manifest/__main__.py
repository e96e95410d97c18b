from tools.flag_manifest.cli import main

raise SystemExit(main())
