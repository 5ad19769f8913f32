"""What the figure and several panel kinds share: the data area's width, the ±SE band, how an observable's
mean and a count read."""
from __future__ import annotations

import math

BAND_SE = 2          # shaded band: ±2 Monte Carlo standard errors
AXES_WIDTH = 6.4     # inches of data area per panel; the legend column comes on top of it

# --- readable names ------------------------------------------------------------------------------------
# How an observable reads inside E(.) and <.>: (factor, quantity); "two_H" is 2 H, so E(two_H) = 2 E(H).
_OBSERVABLE_TEXT = {"two_H": ("2", "H"), "H_change": ("", "H(t) - H(0)"), "sin4pix": ("", "sin 4πx"),
                    "cos2pix": ("", "cos 2πx"), "v_sq": ("", "v²"), "kinetic_temperature": ("", "kinetic temperature")}


def mean_text(observable: str, brackets: str = "E()") -> str:
    """E(H), 2 E(H), E(sin 4πx); with ``brackets="<>"``: <H>, 2<H>."""
    factor, quantity = _OBSERVABLE_TEXT.get(observable, ("", observable))
    if brackets == "<>":
        return f"{factor}<{quantity}>"
    return f"{factor + ' ' if factor else ''}E({quantity})"


def count_text(n) -> str:
    """10^4 as "10⁴", other counts with thousands separators: "160,000", "5000"."""
    n = int(n)
    exponent = round(math.log10(n)) if n > 0 else 0
    if n >= 1000 and 10 ** exponent == n:
        return "10" + str(exponent).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{n:,}" if n >= 10000 else str(n)
