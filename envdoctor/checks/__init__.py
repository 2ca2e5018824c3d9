"""Rule functions, one module per area; importing this package registers them all."""

from envdoctor.checks import allocator, config, gpus, layout, memory, packages, scope

ALL_MODULES = (packages, config, gpus, layout, memory, allocator, scope)
