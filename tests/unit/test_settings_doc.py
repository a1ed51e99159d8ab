"""docs/configuration/reference.md is generated from the settings models and cannot drift from them."""

from __future__ import annotations

from pydantic import BaseModel

from irc_proxy import settings
from irc_proxy.settings_doc import PAGE, SECTIONS, render


def test_committed_reference_is_what_the_code_generates() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), "run: python -m irc_proxy.settings_doc"


def test_every_settings_model_has_a_section() -> None:
    models = {
        value
        for value in vars(settings).values()
        if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == settings.__name__
    }
    documented = {section.model for section in SECTIONS}
    # _Strict is the base; AwsCredentialSettings' keys are shown within the Glue and REST auth sections.
    assert models - documented == {settings._Strict, settings.AwsCredentialSettings}


def test_every_shown_key_has_a_description() -> None:
    for section in SECTIONS:
        for name, field in section.model.model_fields.items():
            if name not in section.skip:
                assert field.description, f"{section.model.__name__}.{name}"


def test_defaults_and_environment_names_are_shown() -> None:
    page = render()
    assert "| `port` | integer (0 .. 65,535) | `8181` | `IRC_PROXY_SERVER__PORT` |" in page
    assert "| `drop_retention` | ISO-8601 duration | `P7D` | `IRC_PROXY_SERVER__DROP_RETENTION` |" in page
    assert "`IRC_PROXY_CATALOGS__<NAME>__VENDING__ROLE_ARN`" in page
