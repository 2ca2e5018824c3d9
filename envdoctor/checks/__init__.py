"""Rule functions, one module per area; importing this package registers them all."""

from envdoctor.checks import (
    allocator,
    config,
    data,
    declared,
    declared_newest,
    deepspeed_ref,
    gpus,
    known_failures,
    layout,
    layout_unused,
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
    deepspeed_ref,
    gpus,
    layout,
    layout_unused,
    memory,
    memory_plan,
    allocator,
    declared,
    declared_newest,
    data,
    scope,
    known_failures,
    secrets,
    repository,
)
