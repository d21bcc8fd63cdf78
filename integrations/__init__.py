"""Framework adapters. Each module imports exactly one framework and tooliscode's public names."""
