"""Pure types every layer shares: architectures, the container layout, errors. No I/O."""
