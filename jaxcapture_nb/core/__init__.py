"""What every other package builds on: names, the step clock, warnings, the host, protocols and the wire's messages."""
