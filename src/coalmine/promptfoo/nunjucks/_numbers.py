"""``Number.prototype``'s formatting methods as V8 does them: radix, precision, exponent, locale.

``toString(16)`` follows V8's ``DoubleToRadixCString`` (fractions to the double's precision),
``toPrecision`` and ``toExponential`` round the exact value of the double half up, as the
specification says, and ``toLocaleString`` is the ``en-US`` format (``1,234.568``: grouped, at
most three decimals, ties away from zero), the locale Node.js uses unless told otherwise.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from coalmine.promptfoo.nunjucks._js import js_number

__all__ = ["js_to_exponential", "js_to_locale_string", "js_to_precision", "js_to_radix"]

_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _special(value: float) -> str | None:
    if math.isnan(value) or math.isinf(value):
        return js_number(value)
    return None


def js_to_radix(value: float, radix: int) -> str:
    """``value.toString(radix)``, ``radix`` from 2 to 36."""
    if radix == 10 or _special(value) is not None:
        return js_number(value)
    negative, value = value < 0, abs(float(value))
    integer = float(math.floor(value))
    fraction = value - integer
    delta = max(0.5 * (math.nextafter(value, math.inf) - value), math.nextafter(0.0, 1.0))
    digits: list[str] = []
    if fraction >= delta:
        while True:
            fraction *= radix
            delta *= radix
            digit = int(fraction)
            digits.append(_DIGITS[digit])
            fraction -= digit
            if (fraction > 0.5 or (fraction == 0.5 and digit & 1)) and fraction + delta > 1:
                while True:  # round up, carrying into the digits already written
                    if not digits:
                        integer += 1
                        break
                    last = _DIGITS.index(digits.pop())
                    if last + 1 < radix:
                        digits.append(_DIGITS[last + 1])
                        break
                break
            if fraction < delta:
                break
    head: list[str] = []
    while math.frexp(integer / radix)[1] - 53 > 0:  # beyond 2**53: digits it cannot hold are 0
        integer /= radix
        head.append("0")
    while True:
        remainder = math.fmod(integer, radix)
        head.append(_DIGITS[int(remainder)])
        integer = (integer - remainder) / radix
        if integer <= 0:
            break
    text = "".join(reversed(head)) + ("." + "".join(digits) if digits else "")
    return ("-" if negative else "") + text


def js_to_precision(value: float, precision: int) -> str:
    """``value.toPrecision(precision)``: ``precision`` significant digits."""
    if (special := _special(value)) is not None:
        return special
    sign, value = ("-" if value < 0 else ""), abs(float(value))
    if value == 0:
        digits, exponent = "0" * precision, 0
    else:
        exponent = math.floor(math.log10(value))
        digits, exponent = _significant(value, precision, exponent)
    if exponent < -6 or exponent >= precision:
        mantissa = digits[0] + ("." + digits[1:] if precision > 1 else "")
        return f"{sign}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"
    if exponent == precision - 1:
        return sign + digits
    if exponent >= 0:
        return f"{sign}{digits[: exponent + 1]}.{digits[exponent + 1 :]}"
    return f"{sign}0.{'0' * (-exponent - 1)}{digits}"


def _significant(value: float, count: int, exponent: int) -> tuple[str, int]:
    """The ``count`` digits of ``value`` rounded half up, and its decimal exponent."""
    for guess in (exponent, exponent + 1, exponent - 1):
        scaled = (Decimal(value) / Decimal(10) ** (guess - count + 1)).quantize(
            Decimal(1), rounding=ROUND_HALF_UP
        )
        if Decimal(10) ** (count - 1) <= scaled < Decimal(10) ** count:
            return str(int(scaled)), guess
    return str(int(scaled)), exponent  # pragma: no cover - one of the guesses always fits


def _shortest(value: float) -> tuple[str, int]:
    """The fewest digits that read back as ``value`` (as ``String(value)`` has), and exponent."""
    if value == 0:
        return "0", 0
    mantissa, _, exp = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0") or "0", point - 1


def js_to_exponential(value: float, fraction_digits: int | None) -> str:
    """``value.toExponential(digits)``; ``None`` as many digits as it takes."""
    if (special := _special(value)) is not None:
        return special
    sign, value = ("-" if value < 0 else ""), abs(float(value))
    if fraction_digits is None:
        digits, exponent = _shortest(value)
        fraction_digits = len(digits) - 1
    elif value == 0:
        digits, exponent = "0" * (fraction_digits + 1), 0
    else:
        exponent = math.floor(math.log10(value))
        digits, exponent = _significant(value, fraction_digits + 1, exponent)
    mantissa = digits[0] + ("." + digits[1:] if fraction_digits else "")
    return f"{sign}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def js_to_locale_string(value: float) -> str:
    """``value.toLocaleString()`` in ``en-US``: ``1,234.568``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-∞" if value < 0 else "∞"
    rounded = Decimal(abs(float(value))).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP)
    whole, _, fraction = f"{rounded:f}".partition(".")
    fraction = fraction.rstrip("0")
    grouped = f"{int(whole):,}"
    sign = "-" if value < 0 and rounded != 0 else ""
    return sign + grouped + ("." + fraction if fraction else "")
