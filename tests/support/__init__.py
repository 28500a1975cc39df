"""What the tests share besides fixtures: real servers (SeaweedFS, rclone mounts, a
dask-gateway server, an S3 proxy), files with known answers, the CF checkers, the command
line in a process of its own, and what a test needs (skipped on a developer's machine,
failed under ``CI=true``). Imported by full name: ``from tests.support.servers import
SeaweedFS``; docs/contributing.md lists the modules."""
