"""The teammate's side of a tag: what an image holds (inspect, diff), whether this host can run it
(doctor), starting it (run, shell), and cleaning up after builds (gc)."""
