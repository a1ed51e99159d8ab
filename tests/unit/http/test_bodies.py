"""What an operation's authorization rule reads in its body (``http/bodies.py``)."""

from __future__ import annotations

from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.operations import policy
from irc_proxy.http.bodies import CommitTableRequest, CommitTransactionRequest, RenameTableRequest


def test_a_commit_with_assert_create_creates_the_table() -> None:
    staged = CommitTableRequest.model_validate({"requirements": [{"type": "assert-create"}], "updates": []})
    assert staged.facts() == {"creates": True}
    assert CommitTableRequest.model_validate({"requirements": [], "updates": []}).facts() == {"creates": False}


def test_a_transaction_names_each_change_and_leaves_one_without_identifier_to_the_handler() -> None:
    body = CommitTransactionRequest.model_validate(
        {
            "table-changes": [
                {
                    "identifier": {"namespace": ["a"], "name": "t"},
                    "requirements": [{"type": "assert-create"}],
                    "updates": [],
                },
                {"requirements": [], "updates": []},
            ]
        }
    )
    assert policy.Requested(**body.facts()).changes == ((TableIdent(("a",), "t"), True),)


def test_a_rename_names_its_source_and_the_destination_namespace() -> None:
    body = RenameTableRequest.model_validate(
        {"source": {"namespace": ["a"], "name": "t"}, "destination": {"namespace": ["b", "c"], "name": "u"}}
    )
    requested = policy.Requested(**body.facts())
    assert (requested.source, requested.destination) == (TableIdent(("a",), "t"), ("b", "c"))
