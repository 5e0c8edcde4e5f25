"""A small SQL tokenizer for the rewrites timeweave does (positions kept for precise errors).

It understands only what a rewrite must not misread: strings, quoted identifiers, comments,
parentheses, words and punctuation.  Everything else passes through to Spark SQL verbatim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum

from timeweave.core.errors import QuerySyntaxError, SpecError


class TokenType(IntEnum):
    WORD = 1
    QUOTED = 2  # `identifier`
    STRING = 3
    NUMBER = 4
    SYMBOL = 5
    LPAREN = 6
    RPAREN = 7


@dataclass(frozen=True, slots=True)
class Token:
    type: TokenType
    text: str
    start: int
    end: int

    @property
    def upper(self) -> str:
        return self.text.upper() if self.type is TokenType.WORD else self.text

    @property
    def name(self) -> str:
        """The identifier this token names (backticks removed)."""
        return self.text[1:-1].replace("``", "`") if self.type is TokenType.QUOTED else self.text


def tokenize(text: str) -> list[Token]:
    """Split SQL text into tokens; comments and whitespace are dropped.

    >>> [t.text for t in tokenize("SELECT `a b`, 'x''y' -- c\\nFROM t")]
    ['SELECT', '`a b`', ',', "'x''y'", 'FROM', 't']
    """
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise QuerySyntaxError("unterminated comment", text=text, position=i)
            i = j + 2
        elif c in "'\"`":
            j = i + 1
            while True:
                if j >= n:
                    kind = "identifier" if c == "`" else "string"
                    raise QuerySyntaxError(f"unterminated {kind}", text=text, position=i)
                if text[j] == "\\" and c != "`":
                    j += 2
                    continue
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            kind = TokenType.QUOTED if c == "`" else TokenType.STRING
            tokens.append(Token(kind, text[i : j + 1], i, j + 1))
            i = j + 1
        elif c.isalpha() or c == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "_$"):
                j += 1
            tokens.append(Token(TokenType.WORD, text[i:j], i, j))
            i = j
        elif c.isdigit():
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "."):
                j += 1
            tokens.append(Token(TokenType.NUMBER, text[i:j], i, j))
            i = j
        elif c == "(":
            tokens.append(Token(TokenType.LPAREN, c, i, i + 1))
            i += 1
        elif c == ")":
            tokens.append(Token(TokenType.RPAREN, c, i, i + 1))
            i += 1
        else:
            two = text[i : i + 2]
            width = 2 if two in ("<=", ">=", "<>", "!=", "==", "||", "::", "<=>") or text[i : i + 3] == "<=>" else 1
            if text[i : i + 3] == "<=>":
                width = 3
            tokens.append(Token(TokenType.SYMBOL, text[i : i + width], i, i + width))
            i += width
    return tokens


_NAME_PART = re.compile(r"\s*(?:`((?:[^`]|``)*)`|(\w+))\s*", re.UNICODE)


def split_qualified_name(name: str, *, where: str | None = None) -> tuple[str, ...]:
    """The parts of a table name as written in SQL (``db.tbl``, ```my db`.`odd``name```), quotes removed.

    A part is an unquoted word (letters, digits, ``_``) or a backquoted identifier (a doubled backquote
    stands for one); parts are separated by dots.  Anything else (spaces inside a part, comments,
    parentheses, a second statement) is not a name: :class:`SpecError` names it, so the text never reaches
    a SQL statement.

    >>> split_qualified_name("spark_catalog.db.`odd``na.me`")
    ('spark_catalog', 'db', 'odd`na.me')
    >>> split_qualified_name("rates ('timeweave.time')")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.SpecError: argument 'name': "rates ('timeweave.time')" is not a table name (parts are words or `quoted` identifiers joined by dots)
    """
    parts: list[str] = []
    i = 0
    while True:
        match = _NAME_PART.match(name, i)
        if match is None or (match.group(1) is None and match.group(2) is None):
            break
        parts.append(match.group(2) if match.group(1) is None else match.group(1).replace("``", "`"))
        i = match.end()
        if i == len(name):
            return tuple(parts)
        if name[i] != ".":
            break
        i += 1
    raise SpecError("name", f"{name!r} is not a table name (parts are words or `quoted` identifiers joined by dots)",
                    where=where)
