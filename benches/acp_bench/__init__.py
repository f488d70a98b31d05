"""The supervisor memory benchmark's parts (benches/acp_supervisor.py)."""
