"""From kernel IR to artifacts: the launch plan (format, schema, loading),
kernel rendering, ahead-of-time compilation and the Triton settings."""
