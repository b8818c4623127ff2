"""Stand-in for transformers.file_utils: BLOOM and MPT import these docstring decorators from here."""
from .utils import add_code_sample_docstrings, add_start_docstrings, add_start_docstrings_to_model_forward  # noqa: F401
