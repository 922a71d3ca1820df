"""Header arithmetic: what evaluates, what is rejected, and the messages."""

from __future__ import annotations

import pytest

from cudabench.catalog.expressions import ExpressionError, evaluate, names_in, parse_tuple

VARIABLES = {"M": 100, "K": 7, "N": 96, "TILE": 16}


def value_of(text: str, variables=VARIABLES) -> tuple[int, ...]:
    """Parse and evaluate text."""
    return evaluate(parse_tuple(text), variables)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cdiv(N, TILE)", (6,)),  # exact division
        ("cdiv(M, TILE)", (7,)),  # rounds up
        ("cdiv(1, TILE)", (1,)),
        ("cdiv(0, TILE)", (0,)),
        ("min(M, 64)", (64,)),
        ("min(M, N, K)", (7,)),
        ("max(M, 64)", (100,)),
        ("M + K * 2", (114,)),  # precedence
        ("(M + K) * 2", (214,)),
        ("M - N - K", (-3,)),  # left associative
        ("M // K", (14,)),
        ("M % K", (2,)),
        ("-K + M", (93,)),
        ("cdiv(N, TILE) * (cdiv(N, TILE) + 1) // 2", (21,)),  # the in-place tiled grid
        ("min(cdiv(M * N, 256), 132 * 8)", (38,)),
        ("2 * TILE * TILE * 4", (2048,)),
    ],
)
def test_evaluates(text, expected):
    assert value_of(text) == expected


@pytest.mark.parametrize("text", ["max(K)", "min(K)", "min()", "cdiv(K)", "cdiv(K, 2, 3)"])
def test_wrong_argument_counts_are_rejected_when_parsing(text):
    with pytest.raises(ExpressionError, match="takes"):
        parse_tuple(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("M", (100,)),
        ("M, N", (100, 96)),
        ("M, N, 3", (100, 96, 3)),
        ("(M, N)", (100, 96)),
        ("  cdiv(N, TILE), cdiv(M, TILE)  ", (6, 7)),
    ],
)
def test_tuples_of_one_to_three(text, expected):
    assert value_of(text) == expected


def test_names_in_lists_variables_not_functions():
    assert names_in(parse_tuple("cdiv(N, TILE), min(M, max(K, 2))")) == {"N", "TILE", "M", "K"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("M.real", "Attribute is not allowed"),
        ("abs(M)", "allowed functions are cdiv, max, min"),
        ("eval('1')", "allowed functions are cdiv, max, min"),
        ("M.bit_length()", "allowed functions are cdiv, max, min"),
        ("min(M, key=N)", "allowed functions are cdiv, max, min"),
        ("1.5", "only integer constants"),
        ("M * 0.5", "only integer constants"),
        ("True", "only integer constants"),
        ("'16'", "only integer constants"),
        ("2 ** 3", "allowed operators are + - * // %"),
        ("N / 2", "allowed operators are + - * // %"),
        ("N << 1", "allowed operators are + - * // %"),
        ("lambda: 1", "Lambda is not allowed"),
        ("[M, N]", "List is not allowed"),
        ("M if N else K", "IfExp is not allowed"),
        ("M < N", "Compare is not allowed"),
        ("cdiv(*M, 2)", "Starred is not allowed"),
        ("__import__('os')", "allowed functions are cdiv, max, min"),
        ("1, 2, 3, 4", "expected 1 to 3 comma-separated values, got 4"),
        ("", "cannot parse"),
        ("M +", "cannot parse"),
        ("M; N", "cannot parse"),
    ],
)
def test_rejected_syntax(text, message):
    with pytest.raises(ExpressionError) as info:
        parse_tuple(text)
    assert message in str(info.value)


def test_unknown_name_lists_known_names():
    with pytest.raises(ExpressionError) as info:
        value_of("cdiv(ROWS, TILE)")
    assert str(info.value) == "unknown name 'ROWS' (known: K, M, N, TILE)"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("M // 0", "division by zero"),
        ("M % (N - 96)", "division by zero"),
        ("cdiv(M, N - 96)", "division by zero in cdiv"),
        ("cdiv(M)", "cdiv takes two arguments, got 1"),
        ("cdiv(M, N, K)", "cdiv takes two arguments, got 3"),
        ("min()", "min takes at least two arguments, got 0"),
        ("max(M)", "max takes at least two arguments, got 1"),
    ],
)
def test_evaluation_errors(text, message):
    with pytest.raises(ExpressionError) as info:
        value_of(text)
    assert message in str(info.value)
