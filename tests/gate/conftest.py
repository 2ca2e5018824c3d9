"""The exported repositories under repos/ are test data: never collected as tests."""

collect_ignore_glob = ["repos/*"]
