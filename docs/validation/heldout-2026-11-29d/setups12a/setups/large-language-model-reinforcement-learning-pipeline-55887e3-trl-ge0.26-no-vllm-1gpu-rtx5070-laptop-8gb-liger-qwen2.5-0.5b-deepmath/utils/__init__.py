from .logging import (
    # Console
    console,
    DualConsole,
    # Setup
    setup_rich_logging,
    # Headers and sections
    print_header,
    print_section,
    # Status messages
    print_success,
    print_error,
    print_warning,
    print_info,
    # Information tables
    print_config_table,
    print_system_info,
    print_model_info,
    print_dataset_info,
    print_training_summary,
    # Progress bars
    create_pipeline_progress,
    # Callbacks
    TrainingProgressCallback,
    DetailedLoggingCallback,
    VerboseLoggingCallback,
    get_training_callbacks,
    # Utilities
    format_duration,
    print_step_info,
    print_gpu_memory_usage,
    print_checkpoint_saved,
    print_evaluation_results,
    print_pipeline_results,
    # Script helpers
    print_script_header,
    print_script_footer,
)
from .run_id import create_run_directory, generate_run_id, save_run_info
