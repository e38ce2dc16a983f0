"""The ``docsan`` command-line front end (Typer). The library never imports this package."""
