# sandboxd agent: rich display, run by the worker. Turns a value into a
# Jupyter-style MIME bundle (mime -> data: text as text, binary as base64)
# from its _repr_*_ methods, and a bundle into an output of the answer.
#
# Everything here calls user code (the _repr_*_ methods), so none of it is
# trusted to behave: a method that raises or returns junk is skipped, and
# never fails the cell. Only KeyboardInterrupt (the stop of a cell) and
# the like go through: they are BaseException, not Exception.
import sys

from _sandboxd_wire import json_dumps, json_loads

# The output's mime and data are the richest representation, in this
# order: clients that know nothing of bundles show one thing, the best.
PREFERENCE = ("image/png", "image/jpeg", "image/svg+xml", "text/html", "text/markdown", "application/json",
              "text/plain")

# Types whose bundle data is base64; the others are text.
BINARY = ("image/png", "image/jpeg")

# The methods a value may have, as IPython's formatters call them.
REPR_METHODS = (("image/png", "_repr_png_"), ("image/jpeg", "_repr_jpeg_"), ("image/svg+xml", "_repr_svg_"),
                ("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"),
                ("application/json", "_repr_json_"))

# A bundle's bytes, all its representations together: what does not fit
# (the largest last, text/plain first) is left out. The answer's own bound
# (max_answer) applies on top, in the supervisor.
MAX_BUNDLE = 8 << 20

# A kind of figure: rendered as PNG, as the figures left open are, and
# output with no bundle, as before bundles were.
FIGURE = object()


def method(obj, name):
    """obj's method name, if it has a real one: not on a class (its
    methods want an instance), nor from a __getattr__ that answers every
    name (the canary, as IPython checks)."""
    if isinstance(obj, type):
        return None
    try:
        if _has(obj, "_ipython_canary_method_should_not_exist_"):
            return None
        m = getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - user code
        return None
    return m if callable(m) else None


def _has(obj, name):
    try:
        return getattr(obj, name, None) is not None
    except Exception:  # noqa: BLE001 - user code
        return True


def _encode(mime, value):
    """value as bundle data for mime, or None if it is not one."""
    if isinstance(value, tuple) and len(value) == 2:
        value = value[0]  # (data, metadata), as IPython allows
    if mime in BINARY:
        if isinstance(value, (bytes, bytearray)):
            import base64
            return base64.b64encode(bytes(value)).decode()
        if isinstance(value, str):
            # Already base64, as Jupyter's bundles carry it, if it is.
            import base64
            value = "".join(value.split())
            try:
                base64.b64decode(value, validate=True)
            except ValueError:  # binascii.Error, or not ASCII
                return None
            return value
        return None
    if mime == "application/json":
        if isinstance(value, str):
            # JSON text already, if it is.
            try:
                json_loads(value)
            except ValueError:
                return None
            return value
        try:
            return json_dumps(value)
        except Exception:  # noqa: BLE001 - not JSON serialisable
            return None
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def figure_png(obj):
    """obj as a PNG, base64, if it is a matplotlib figure; None if not."""
    mf = sys.modules.get("matplotlib.figure")
    if mf is None or not isinstance(obj, getattr(mf, "Figure", ())):
        return None
    import base64
    import io
    b = io.BytesIO()
    obj.savefig(b, format="png")
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        # Shown now; the figures left open at the cell's end are shown
        # then, and this one must not be twice.
        try:
            plt.close(obj)
        except Exception:  # noqa: BLE001
            pass
    return base64.b64encode(b.getvalue()).decode()


def bundle_of(obj, text_limit):
    """obj's representations (mime -> data), text/plain cut to text_limit
    characters; FIGURE and its PNG for a matplotlib figure."""
    try:
        png = figure_png(obj)
    except Exception:  # noqa: BLE001 - a figure that cannot render shows as text
        png = None
    if png is not None:
        return FIGURE, png
    found = {}
    m = method(obj, "_repr_mimebundle_")
    if m is not None:
        try:
            b = m(include=None, exclude=None)
        except TypeError:
            try:
                b = m()  # one that takes no arguments
            except Exception:  # noqa: BLE001
                b = None
        except Exception:  # noqa: BLE001
            b = None
        if isinstance(b, tuple) and len(b) == 2:
            b = b[0]
        if isinstance(b, dict):
            for mime, value in b.items():
                if mime in PREFERENCE:
                    data = _encode(mime, value)
                    if data is not None:
                        found[mime] = data
    for mime, name in REPR_METHODS:
        if mime in found:
            continue
        m = method(obj, name)
        if m is None:
            continue
        try:
            data = _encode(mime, m())
        except Exception:  # noqa: BLE001
            data = None
        if data is not None:
            found[mime] = data
    if "text/plain" not in found:
        try:
            found["text/plain"] = repr(obj)
        except Exception:  # noqa: BLE001
            found["text/plain"] = object.__repr__(obj)
    found["text/plain"] = found["text/plain"][:text_limit]
    bundle, size = {}, 0
    for mime in ("text/plain",) + PREFERENCE:
        if mime not in found or mime in bundle:
            continue
        n = len(mime) + len(found[mime].encode("utf-8", "replace"))
        if size + n <= MAX_BUNDLE:
            bundle[mime] = found[mime]
            size += n
    return bundle, None


def output_of(obj, text_limit, rich_only=False):
    """obj as an output of the answer: {"mime","data","bundle"}, mime and
    data the richest representation (data base64, as outputs always
    had it). With rich_only, None when obj has nothing but text/plain (the
    last expression's repr is the result already)."""
    bundle, png = bundle_of(obj, text_limit)
    if bundle is FIGURE:
        return {"mime": "image/png", "data": png}
    if rich_only and len(bundle) == 1:
        return None
    mime = next(m for m in PREFERENCE if m in bundle)
    data = bundle[mime]
    if mime not in BINARY:
        import base64
        data = base64.b64encode(data.encode("utf-8", "replace")).decode()
    return {"mime": mime, "data": data, "bundle": bundle}


def output_size(o):
    """The bytes an output draws on the answer's budget, as the daemon
    counts them (UTF-8)."""
    n = len(str(o.get("mime", "")).encode("utf-8", "replace")) + len(str(o.get("data", "")).encode("utf-8", "replace"))
    b = o.get("bundle")
    if isinstance(b, dict):
        for k, v in b.items():
            n += len(str(k).encode("utf-8", "replace")) + len(str(v).encode("utf-8", "replace"))
    return n
