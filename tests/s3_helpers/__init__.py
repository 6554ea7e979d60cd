"""A loopback S3-compatible server for the object-storage tests."""
