"""Every row of smkit/config/rule_table.py that names a botocore service-model member quotes that member's
documentation word for word: AWS's whole sentence, found in the text botocore ships (HTML tags dropped,
whitespace collapsed). Rows without a member cite a developer-guide page and are checked by hand."""

from __future__ import annotations

import pytest

from smkit.aws.service_models import member, plain
from smkit.config.rule_table import ROWS, Row

MODELLED = [r for r in ROWS if r.model is not None]


@pytest.mark.parametrize("row", MODELLED, ids=[r.id for r in MODELLED])
def test_row_quotes_the_members_documentation_word_for_word(row: Row) -> None:
    assert row.model is not None
    service, shape, name = row.model
    documentation = plain(member(service, shape, name).documentation)
    assert row.sentence in documentation, (
        f"{row.id}: {row.sentence!r} is not in {shape}.{name}: {documentation!r}"
    )
    # A whole sentence: it starts one and ends with its full stop.
    at = documentation.index(row.sentence)
    assert at == 0 or documentation[at - 2 : at] in (". ", '" '), (
        row.id,
        documentation[max(0, at - 40) : at],
    )
    assert row.sentence.endswith("."), row.id


def test_rows_that_cite_the_api_reference_name_its_member() -> None:
    """An API-reference page is published from the service model: its rows are checked by the test above."""
    api = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
    unchecked = [r.id for r in ROWS if r.url.startswith(api) and r.model is None]
    assert unchecked == []


def test_the_adapter_row_quotes_the_tar_gz_sentence() -> None:
    [row] = [r for r in ROWS if r.id == "adapter-data"]
    assert row.sentence == "This path must point to a single gzip compressed tar archive (.tar.gz suffix)."
