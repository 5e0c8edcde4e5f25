"""A SQL script split into its statements at the ``;`` outside strings, quoted names and comments.

Positions stay those of the whole script, so an error in the third statement points into the script the
user wrote.
"""

from __future__ import annotations

from dataclasses import dataclass

from timeweave.core.sql_tokens import Token, TokenType, tokenize


@dataclass(frozen=True)
class Statement:
    """One statement of a script: its tokens (positions in ``script``) and its text, ``script[start:end]``."""

    script: str
    tokens: tuple[Token, ...]

    @property
    def start(self) -> int:
        return self.tokens[0].start

    @property
    def end(self) -> int:
        return self.tokens[-1].end

    @property
    def text(self) -> str:
        return self.script[self.start : self.end]

    def starts_with(self, *words: str) -> bool:
        """Whether the statement's first words are ``words`` (case-insensitive).

        >>> split_statements("create temporary view v as select 1")[0].starts_with("CREATE", "TEMPORARY")
        True
        """
        head = self.tokens[: len(words)]
        return len(head) == len(words) and all(
            t.type is TokenType.WORD and t.upper == w for t, w in zip(head, words, strict=True))


def split_statements(script: str) -> tuple[Statement, ...]:
    """The statements of ``script``, in order; empty statements (``;;``, a trailing ``;``, comments) are dropped.

    >>> [s.text for s in split_statements("CREATE VIEW v AS SELECT ';' AS s; -- done\\nSELECT * FROM v;")]
    ["CREATE VIEW v AS SELECT ';' AS s", 'SELECT * FROM v']
    """
    statements: list[Statement] = []
    current: list[Token] = []
    for token in tokenize(script):
        if token.type is TokenType.SYMBOL and token.text == ";":
            if current:
                statements.append(Statement(script, tuple(current)))
            current = []
        else:
            current.append(token)
    if current:
        statements.append(Statement(script, tuple(current)))
    return tuple(statements)


def in_place(script: str, start: int, text: str) -> str:
    """``text`` (which starts at ``start`` in ``script``) preceded by the script's line breaks before it and blanks,
    so a syntax error in it has the script's line and column.

    >>> in_place("ab; cd", 4, "cd")
    '    cd'
    """
    return "".join(c if c == "\n" else " " for c in script[:start]) + text


__all__ = ["Statement", "in_place", "split_statements"]
