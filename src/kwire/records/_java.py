"""Java's string decoding (``new String(bytes, UTF_8)``), the one copy kwire uses.

Approach: valid UTF-8 is decoded by Python (the same result as Java, and fast); malformed input
follows ``java.lang.String.decodeUTF8`` (Java 17) byte by byte, which differs from Python's
``errors="replace"`` in how many bytes one U+FFFD replaces. Used wherever kwire shows bytes as Kafka's
Java code would: ``kwire dump``'s string decoder and the columnar decoder's header keys.
"""

from __future__ import annotations

__all__ = ["java_string"]


def _cont(b: int) -> bool:
    return (b & 0xC0) == 0x80


def java_string(data: bytes | memoryview) -> str:
    """``new String(bytes, UTF_8)`` as Java 17 decodes it (Kafka's ``StringDecoder``).

    Valid UTF-8 is decoded by Python; malformed input follows ``java.lang.String.decodeUTF8``,
    which differs from Python's ``errors="replace"`` in how many bytes one U+FFFD replaces (an
    encoded surrogate is one replacement for three bytes in Java, three in Python, ...).
    """
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        pass
    data = bytes(data)
    out: list[str] = []
    n, sp = len(data), 0
    repl = "\ufffd"
    while sp < n:
        b1 = data[sp]
        sp += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif b1 >> 5 == 0b110 and b1 & 0x1E:  # 2 bytes (C2..DF)
            if sp < n:
                b2 = data[sp]
                if not _cont(b2):
                    out.append(repl)
                else:
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                    sp += 1
                continue
            out.append(repl)
            break
        elif b1 >> 4 == 0b1110:  # 3 bytes
            if sp + 1 < n:
                b2, b3 = data[sp], data[sp + 1]
                if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) or not _cont(b3):
                    out.append(repl)
                    # malformed3: skip the lead byte, and b2 too when it could start nothing else
                    sp += 0 if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) else 1
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(repl if 0xD800 <= c <= 0xDFFF else chr(c))
                    sp += 2
                continue
            if sp < n and ((b1 == 0xE0 and (data[sp] & 0xE0) == 0x80) or not _cont(data[sp])):
                out.append(repl)
                continue
            out.append(repl)
            break
        elif b1 >> 3 == 0b11110:  # 4 bytes
            if sp + 2 < n:
                b2, b3, b4 = data[sp], data[sp + 1], data[sp + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not _cont(b2) or not _cont(b3) or not _cont(b4) or not 0x10000 <= uc <= 0x10FFFF:
                    out.append(repl)
                    # malformed4: how many bytes the replacement stands for
                    if (
                        b1 > 0xF4
                        or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)
                        or (b1 == 0xF4 and (b2 & 0xF0) != 0x80)
                        or not _cont(b2)
                    ):
                        pass
                    elif not _cont(b3):
                        sp += 1
                    else:
                        sp += 2
                else:
                    out.append(chr(uc))
                    sp += 3
                continue
            if b1 > 0xF4 or (
                sp < n
                and (
                    (b1 == 0xF0 and not 0x90 <= data[sp] <= 0xBF)
                    or (b1 == 0xF4 and (data[sp] & 0xF0) != 0x80)
                    or not _cont(data[sp])
                )
            ):
                out.append(repl)
                continue
            sp += 1
            out.append(repl)
            if sp < n and not _cont(data[sp]):
                continue
            break
        else:
            out.append(repl)
    return "".join(out)
