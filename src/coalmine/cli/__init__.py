"""The command line: parse, call one library function, display, exit code. Nothing imports it."""
