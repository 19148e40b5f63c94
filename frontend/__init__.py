"""Model front end: TFLite flatbuffer to graph IR, and the rewrites that fold it."""
