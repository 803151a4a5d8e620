"""Reports render a finished run: the seed's JSON result file and the markdown table."""
