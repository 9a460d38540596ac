"""What goes into a build, fetched and pinned: git sources, local trees, installer packages,
bootstrapped bases, the site configuration, and the build contexts made of them."""
