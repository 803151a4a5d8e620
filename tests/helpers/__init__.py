"""Test helpers: a real loopback OpenAI-compatible server and small project builders."""
