"""Stand-in for transformers.utils.logging: standard-library loggers that also have warning_once
(each distinct message logged once), which the modeling files call."""
import functools
import logging


def get_logger(name):
    logger = logging.getLogger(name)
    logger.warning_once = functools.lru_cache(None)(logger.warning)
    return logger
