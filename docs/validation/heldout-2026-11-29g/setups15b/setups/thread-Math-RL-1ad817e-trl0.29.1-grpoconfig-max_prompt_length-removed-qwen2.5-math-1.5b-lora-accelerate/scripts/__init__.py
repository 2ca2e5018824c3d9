# Package marker for organized script wrappers.
