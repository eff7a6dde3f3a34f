"""hakari (秤): fair, variance-aware evaluation of LLMs across instruction templates."""

__version__ = "0.1.0"
