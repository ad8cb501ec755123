"""The kit in the browser with nothing behind it: a JupyterLite site of the notebooks that run
without Spark or a socket, with the Pyodide kernel, built from PyPI and npm and then served by any
static host (docs/workshop.md, "The browser kit").

    from kipviz.lite.site import build_site      # make lite, kipviz lite -o site
    build_site("site")

site.py builds it (fetch.py: the cached downloads; lock.py: Pyodide's package lock; notebooks.py:
which notebooks, the cells that need Spark or a socket; site_data.py: the one wheel made at build
time); runtime.py runs in the browser's kernel. Nothing is imported here, so that the kernel's
`import kipviz.lite.runtime` loads no build code."""
