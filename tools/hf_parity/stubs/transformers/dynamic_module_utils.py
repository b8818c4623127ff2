"""Stand-in: configuration_utils imports custom_object_save (remote-code configs only, never used here)."""


def custom_object_save(*args, **kwargs):
    raise NotImplementedError("remote-code configs are not emulated")
