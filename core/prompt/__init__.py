"""What the model reads: the code tool's guide, the tool catalog, how results read back,
and token counting."""
