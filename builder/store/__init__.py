"""What stackbuild keeps between runs: the content-addressed cache, and the HTTP client that fills it."""
