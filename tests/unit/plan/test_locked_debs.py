"""The locked .debs an install is given: each one's name and version in Debian's shape (never an
option of apt or dpkg), listed one word per field, the list in the context's key."""

from __future__ import annotations

import pytest

from builder.lock.locked import LockedDeb
from builder.plan.debs_at_hand import context_digest, locked_list


def deb(name: str, version: str, sha: str) -> LockedDeb:
    return LockedDeb(
        name=name,
        version=version,
        architecture="all",
        repository="http://deb.debian.org/debian",
        path=f"pool/main/s/{name}/{name}_{version.split(':')[-1]}_all.deb",  # no epoch in pool names,
        sha256=sha * 64,
        size=1,
    )


def test_the_locked_list_is_one_word_per_field_and_in_the_context_key() -> None:
    found = [deb("sbpre", "1:1.0~rc1+dfsg-2", "a"), deb("sbmain", "1.0", "b")]
    assert locked_list(found).splitlines()[0] == f"{'a' * 64} sbpre_1.0~rc1+dfsg-2_all.deb sbpre 1:1.0~rc1+dfsg-2 all"
    other = [found[0], deb("sbmain", "1.1", "b")]  # the same bytes said to be another version
    assert context_digest(found) != context_digest(other)


@pytest.mark.parametrize(("field", "value"), [("name", "sb pre"), ("version", "1.0 --force-all"), ("name", "-x")])
def test_a_locked_deb_whose_name_or_version_is_not_debians_shape_is_refused(field: str, value: str) -> None:
    with pytest.raises(ValueError, match=field):
        LockedDeb.model_validate({**deb("sbpre", "1.0", "a").model_dump(), field: value})
