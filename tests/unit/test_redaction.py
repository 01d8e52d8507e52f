"""Recognized secrets are replaced with `[REDACTED:<kind>]` wherever they sit; nothing else is
touched.

Every secret here is hand-written: it has the shape of a real one and belongs to nobody.
"""

from __future__ import annotations

import json

import pytest

from chalicelib.domain.redaction import (
    MIN_KNOWN_CHARS,
    find,
    first_secret,
    redact,
    redact_value,
    rules,
)

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n"
    "aFDrBz9vFqU4yTjVlD1UsoFBOjKdG2oB3j0j5rGzMZqzFmi0XyMOnD==\n-----END RSA PRIVATE KEY-----"
)

TOKENS = {
    # kind -> a secret that is a whole token (no key=value context needed)
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "aws_access_key (ASIA)": "ASIAY34FZKBOKMUTVV7A",
    "openai_key": "sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678",
    "openai_key (legacy)": "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",
    "anthropic_key": "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa-_AbCdEf",
    "github_token": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_token (gho)": "gho_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
    "github_token (fine-grained)": (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOP"
    ),
    "google_api_key": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "slack_token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "slack_webhook": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "jwt": JWT,
    "gitlab_token": "glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn",
    "stripe_key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
}


def kind_of(placeholder_kind: str) -> str:
    return placeholder_kind.split(" ")[0]


@pytest.mark.parametrize("name", list(TOKENS))
@pytest.mark.parametrize(
    "context",
    [
        "{}",
        "the key is {}.",
        "({})",
        '{{"api_key": "{}"}}',
        "key={}&x=1",
        "line one\n{}\nline three",
        "'{}'",
    ],
)
def test_every_kind_of_token_is_replaced_whole_in_any_context(name, context):
    secret = TOKENS[name]
    text = context.format(secret)
    out = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind_of(name)}]" in out
    assert out == context.format(f"[REDACTED:{kind_of(name)}]"), out  # the rest stays as it was


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"aws_secret_access_key={AWS_SECRET}", "aws_secret_access_key=[REDACTED:aws_secret_key]"),
        (
            f"AWS_SECRET_ACCESS_KEY: {AWS_SECRET}",
            "AWS_SECRET_ACCESS_KEY: [REDACTED:aws_secret_key]",
        ),
        (
            f'{{"SecretAccessKey": "{AWS_SECRET}", "AccessKeyId": "ASIAY34FZKBOKMUTVV7A"}}',
            '{"SecretAccessKey": "[REDACTED:aws_secret_key]", "AccessKeyId": '
            '"[REDACTED:aws_access_key]"}',
        ),
        (f"aws_secret = '{AWS_SECRET}'", "aws_secret = '[REDACTED:aws_secret_key]'"),
        (
            "Authorization: Bearer abc123def456ghi789jkl",
            "Authorization: Bearer [REDACTED:bearer_token]",
        ),
        (
            f"curl -H 'authorization: bearer {JWT}'",
            "curl -H 'authorization: bearer [REDACTED:bearer_token]'",
        ),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED:basic_auth]"),
        (
            "postgres at https://admin:hunter2secret@db.example.com:5432/app ok",
            "postgres at https://admin:[REDACTED:basic_auth]@db.example.com:5432/app ok",
        ),
        (f"key:\n{PRIVATE_KEY}\nthat was it", "key:\n[REDACTED:private_key]\nthat was it"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU cut off here",
            "[REDACTED:private_key]",
        ),
    ],
)
def test_a_key_value_context_keeps_its_key_and_loses_its_value(text, expected):
    assert redact(text) == expected


def test_secrets_inside_json_text_are_found_and_the_json_stays_valid():
    doc = {
        "tool": "deploy",
        "env": {"AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE", "AWS_SECRET_ACCESS_KEY": AWS_SECRET},
        "headers": {"Authorization": "Bearer abc123def456ghi789jkl"},
        "note": f"pem {PRIVATE_KEY}",
    }
    text = json.dumps(doc)
    out = json.loads(redact(text))
    assert out == {
        "tool": "deploy",
        "env": {
            "AWS_ACCESS_KEY_ID": "[REDACTED:aws_access_key]",
            "AWS_SECRET_ACCESS_KEY": "[REDACTED:aws_secret_key]",
        },
        "headers": {"Authorization": "Bearer [REDACTED:bearer_token]"},
        "note": "pem [REDACTED:private_key]",
    }
    # The same document as a value: every string inside it, keys included.
    assert redact_value(doc) == out
    nested = json.dumps({"payload": text})  # JSON inside a JSON string (escaped quotes)
    assert AWS_SECRET not in redact(nested) and "[REDACTED:aws_secret_key]" in redact(nested)


@pytest.mark.parametrize(
    "text",
    [
        "123e4567-e89b-12d3-a456-426614174000",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "The answer is 42. Ask-me-anything about the weather; the task-management-dashboard-v2 "
        "works.",
        "desk-organizer-supplies-for-the-home-office-2024 and a risk-assessment-framework-document",
        "sk-short",
        "mask-ABCDEFGHIJKLMNOPQRSTUVWXYZ1234",
        "xAKIAIOSFODNN7EXAMPLE",
        "the bearer of this letter is a friend",
        "bearer bonds-are-financial-instruments",
        "Version 1.2.3, see https://example.com/a?b=c#frag and mail user@example.com",
        "AKIA is the prefix of an access key id; eyJ is how JSON starts in base64",
        "git commit 3f786850e387550fdab836ed7e6dc881de23001b; run_0123456789abcdef; "
        "ds_a1b2c3d4e5f6",
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in "
        "May.",
    ],
)
def test_ordinary_text_ids_and_hashes_stay_as_they_are(text):
    assert redact(text) == text, find(text)


def test_a_token_shaped_match_inside_a_longer_word_is_not_split_off():
    # `sk-`, `gho_`, `AKIA` glued to the end of a word are part of that word, not a secret.
    for word in (
        "task-abcdefghijklmnopqrstuvwxyz0123456789",
        "mango_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
        "BAKIAIOSFODNN7EXAMPLE",
    ):
        assert redact(word) == word
    # A key with more glued on after it goes whole: no tail of it is left behind.
    assert redact("AKIAIOSFODNN7EXAMPLEXYZ123 end") == "[REDACTED:aws_access_key] end"
    assert redact(f"{TOKENS['github_token']}extra_bits-9") == "[REDACTED:github_token]"


def test_the_organization_s_own_secret_values_are_replaced_wherever_they_appear():
    known = ("correct-horse-battery-staple", 'with "quotes" inside', "short")
    text = 'pw correct-horse-battery-staple; json: {"v": "with \\"quotes\\" inside"}; short stays'
    assert (
        redact(text, known) == 'pw [REDACTED:secret]; json: {"v": "[REDACTED:secret]"}; short stays'
    )
    assert len("short") < MIN_KNOWN_CHARS
    assert redact_value({"a": ["xcorrect-horse-battery-staplex"]}, known) == {
        "a": ["x[REDACTED:secret]x"]
    }


def test_redacting_is_idempotent_and_leaves_non_strings_alone():
    text = (
        f"AKIAIOSFODNN7EXAMPLE aws_secret_access_key={AWS_SECRET} Bearer abc123def456ghi789jkl "
        f"{JWT}"
    )
    once = redact(text)
    assert redact(once) == once
    assert redact_value(
        {"n": 3, "ok": True, "none": None, "f": 1.5, "list": [1, "AKIAIOSFODNN7EXAMPLE"]}
    ) == {"n": 3, "ok": True, "none": None, "f": 1.5, "list": [1, "[REDACTED:aws_access_key]"]}
    assert redact("") == ""


def test_most_patterns_are_detect_secrets_own():
    sources = {r.source for r in rules()}
    assert {
        "detect-secrets AWSKeyDetector",
        "detect-secrets GitHubTokenDetector",
        "detect-secrets SlackDetector",
        "detect-secrets JwtTokenDetector",
        "detect-secrets BasicAuthDetector",
        "detect-secrets OpenAIDetector",
    } <= sources
    assert sum(r.source != "assay" for r in rules()) > sum(r.source == "assay" for r in rules())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Authorization: Bearer AbcdefGhijklMnopqrStuvwxYz",
            "Authorization: Bearer [REDACTED:bearer_token]",
        ),
        ("xapp-1-A0123456789-1234567890123-abcdef0123456789", "[REDACTED:slack_token]"),
        (
            f"<Credentials><SecretAccessKey>{AWS_SECRET}</SecretAccessKey></Credentials>",
            "<Credentials><SecretAccessKey>[REDACTED:aws_secret_key]</SecretAccessKey></Credentials>",
        ),
        (
            "<SessionToken>" + "FwoGZXIvYXdzEJr" * 5 + "</SessionToken>",
            "<SessionToken>[REDACTED:aws_session_token]</SessionToken>",
        ),
        (
            f"aws configure --aws-secret-access-key {AWS_SECRET} --profile x",
            "aws configure --aws-secret-access-key [REDACTED:aws_secret_key] --profile x",
        ),
    ],
)
def test_bearer_tokens_without_digits_app_tokens_and_aws_xml_and_flags(text, expected):
    assert redact(text) == expected


def test_the_cut_off_start_of_a_long_known_value_goes_however_long_it_is():
    secret = "Qm9vdHN0cmFwU2VjcmV0VmFsdWU" * 8  # 216 characters
    for kept in (6, 40, 150, len(secret) - 1):
        text = f"expected 'x', got '{secret[:kept]}'... (cut)"
        assert redact(text, [secret]) == "expected 'x', got '[REDACTED:secret]'... (cut)", kept
    assert redact(f"{secret[:5]}...", [secret]) == f"{secret[:5]}..."  # too short to tell


@pytest.mark.timeout(120)  # linear work takes well under a second; the quadratic forms took minutes
def test_texts_built_to_make_the_search_quadratic_are_redacted_in_linear_work():
    # Many cuts, each after the first characters of one of many long known values; long runs of
    # key prefixes glued together.
    known = [f"{i:04d}" + "Zq8" * 5000 for i in range(50)]
    text = "".join(k[:8] + "y" * 10 + "..." for k in known) * 100
    assert redact(text, known) == text  # near-misses: nothing here is a secret
    glued = "sk-a-" * 100_000
    assert redact(glued) == glued
    assert redact("sk-" * 20000 + "Abcdefghij0123456789xyz") == "[REDACTED:openai_key]"


def test_first_secret_names_the_path_and_kind_of_the_first_secret_inside_a_value_never_the_value():
    spec = {
        "runtime": "python",
        "options": {"answer": "42", "calls": [{"args": ["x", TOKENS["github_token"]]}]},
    }
    assert first_secret(spec) == (".options.calls[0].args[1]", "github_token")
    assert first_secret({"env": {"AWS_SECRET_ACCESS_KEY": AWS_SECRET}}) == (
        ".env.AWS_SECRET_ACCESS_KEY",
        "aws_secret_key",
    )
    assert first_secret(
        {"note": "pw correct-horse-battery-staple"}, ["correct-horse-battery-staple"]
    ) == (".note", "secret")
    assert first_secret(TOKENS["jwt"]) == ("", "jwt")
    assert (
        first_secret({"answer": "42", "n": 3, "ok": True, "placeholder": "[REDACTED:secret]"})
        is None
    )


def test_a_pattern_with_a_needed_word_is_still_found_in_any_case_and_in_unicode_text():
    """`Rule.needs` skips a pattern on an ASCII text lacking its word (in lower case); the word's
    case never matters, and a non-ASCII text always runs the pattern (`ſ` matches `s` there)."""
    token = "A" * 20 + "b" * 20 + "/"
    for text in (
        f"AWS_SESSION_TOKEN={token}",
        f"aws_session_TOKEN: {token}",
        f"Authorization: Basic {'QWxhZGRpbjpvcGVuc2VzYW1l'}",
        f"é AWS_SESSION_TOKEN={token}",
    ):
        assert "[REDACTED:" in redact(text), text
    assert redact(f"ſecret_key = {'A1b2' * 10}") != f"ſecret_key = {'A1b2' * 10}"
    assert [r.kind for r in rules() if r.needs] and all(
        r.needs == r.needs.lower() for r in rules() if r.needs
    )
