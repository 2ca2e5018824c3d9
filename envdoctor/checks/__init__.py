"""Rule functions, one module per area; importing this package registers them all."""

from envdoctor.checks import (
    allocator,
    config,
    data,
    declared,
    gpus,
    known_failures,
    layout,
    memory,
    memory_plan,
    packages,
    repository,
    scope,
    secrets,
)

ALL_MODULES = (
    packages,
    config,
    gpus,
    layout,
    memory,
    memory_plan,
    allocator,
    declared,
    data,
    scope,
    known_failures,
    secrets,
    repository,
)
