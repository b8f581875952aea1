"""The one exception type of the packager."""

from __future__ import annotations

from smkit.archive import ArchiveError


class PackagingError(ArchiveError):
    """A model that cannot be packaged or an archive that does not validate.

    ``str(error)`` reads ``<file or field>: <what is wrong, with the bad value>; <how to fix it>``;
    the three parts are also available as ``subject``, ``problem`` and ``fix``.
    """

    @classmethod
    def from_archive_error(cls, error: ArchiveError) -> PackagingError:
        """Re-raise an archive-level refusal as a packaging error with the same message."""
        return cls(error.subject, error.problem, error.fix)
