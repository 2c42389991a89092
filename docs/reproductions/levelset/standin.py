"""Plot the SYNTHETIC stand-in of the Sec. 5.3 lifetime map (the real data are not public).

.venv/bin/python docs/reproductions/levelset/standin.py docs/reproductions/levelset/standin.png
"""

from __future__ import annotations

import sys

from boloop.problems.levelset import CARRIER_X1, CARRIER_X2, synthetic_lifetime_field


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    life = synthetic_lifetime_field()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    im = ax.pcolormesh(CARRIER_X1, CARRIER_X2, life.T, shading="auto", cmap="viridis")
    ax.contour(CARRIER_X1, CARRIER_X2, life.T, levels=[3.0], colors="r")
    fig.colorbar(im, label="lifetime (synthetic)")
    ax.set_title(f"synthetic stand-in, red: lifetime = 3 (H* = {100 * (life <= 3).mean():.1f}%)")
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    fig.tight_layout()
    fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "standin.png", dpi=80)


if __name__ == "__main__":
    main()
