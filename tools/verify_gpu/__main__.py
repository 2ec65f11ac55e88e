"""`python -m tools.verify_gpu`: see the package's docstring."""
from . import main

raise SystemExit(main())
