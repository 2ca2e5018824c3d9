"""Rule functions, one module per area; importing this package registers them all."""

from envdoctor.checks import allocator, config, declared, gpus, layout, memory, packages

ALL_MODULES = (packages, config, gpus, layout, memory, allocator, declared)
