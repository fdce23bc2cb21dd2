"""params.yaml's schema: the typed sections, the machinery that builds them, the prepare section."""
