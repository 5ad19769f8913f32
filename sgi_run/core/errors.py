"""The one exception type for input a user can get wrong (config keys, parameters, pairings)."""


class ConfigError(ValueError):
    """Bad input, refused before any compute. ``str(err)`` is a single line naming the key,
    the value given and what is allowed (also ``err.key``, ``err.value``, ``err.allowed``).

    Example:

        >>> import sgi_run
        >>> try:
        ...     sgi_run.plan(paths=0)
        ... except sgi_run.ConfigError as err:
        ...     print(err.key, err.value)
        plan.paths 0
    """

    def __init__(self, key: str, value, allowed: str):
        self.key, self.value, self.allowed = key, value, allowed
        # One line whatever the key holds: a key of a file (a YAML key) may hold a line break, shown escaped.
        shown = key if key.isprintable() else repr(key)[1:-1]
        super().__init__(f"{shown}={value!r} is not allowed: {allowed}")

    def under(self, prefix: str) -> "ConfigError":
        """The same error with its key placed under a config group (``nu`` -> ``system.nu``)."""
        return ConfigError(f"{prefix}.{self.key}", self.value, self.allowed)


def require(key: str, value, ok: bool, allowed: str) -> None:
    """The one-line input check: refuse ``key=value`` (``ConfigError``) unless ``ok``."""
    if not ok:
        raise ConfigError(key, value, allowed)
