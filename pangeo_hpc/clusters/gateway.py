"""dask-gateway clusters (the Pangeo hubs' way), set up like the batch clusters.

The gateway is found through dask-gateway's own configuration (``gateway.address``,
``gateway.auth.type``, ...; ``DASK_GATEWAY__ADDRESS=http://...`` works as usual). A site
profile of ``kind: gateway`` gives the cluster options the gateway offers (``options:``,
e.g. ``worker_cores``, ``worker_memory``, ``image``) and extra worker variables
(``environment:``).

:func:`gateway_spec` is pure: it says what a cluster would be asked for, without a gateway
(``get_cluster("gateway", preview=True)``), its credentials shown as ``***``. Workers get
the batch workers' environment (:func:`~pangeo_hpc.clusters.jobqueue.worker_env`: HDF5
locking off, one BLAS thread) and this process's ``AWS_*`` variables, through the cluster
option named by config ``pangeo-hpc.gateway.environment-option`` (Pangeo's deployments call
it ``environment``). Before work starts, :func:`check_versions` compares python, dask,
distributed, numpy and pangeo-hpc here and on a worker.
"""

from __future__ import annotations

import importlib
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.clusters.jobqueue import worker_env
from pangeo_hpc.errors import ClusterError, InputError
from pangeo_hpc.extras import require
from pangeo_hpc.write.swap import deferred_signals

#: this process's variables the workers get as they are (S3 credentials and endpoint)
PASSED_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
)
#: of those, the ones never shown
SECRET_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
#: what the client and a worker must agree on (module names; pangeo_hpc as pangeo-hpc)
VERSIONED = ("python", "dask", "distributed", "numpy", "pangeo_hpc")
#: profile keys that are ours, not the gateway's options
OWN_KEYS = ("kind", "options", "environment", "data_root")


@dataclass(frozen=True, repr=False)
class GatewaySpec:
    """What a gateway cluster is asked for: its cluster options and the workers' variables.

    ``repr`` and :meth:`shown` hide the credentials; only :meth:`options_for` hands them on.

    Parameters
    ----------
    options : dict[str, Any], optional
        The cluster options the gateway offers (``worker_cores``, ``image``, ...).
    environment : dict[str, str], optional
        Variables set on the workers (credentials among them).
    environment_option : str, optional
        The cluster option that carries ``environment``; ``None`` when the gateway has
        none.

    Examples
    --------
    >>> from pangeo_hpc.clusters.gateway import GatewaySpec
    >>> GatewaySpec({"worker_cores": 2}, {"AWS_SECRET_ACCESS_KEY": "s3cr3t"})
    GatewaySpec({'worker_cores': 2, 'environment': {'AWS_SECRET_ACCESS_KEY': '***'}})
    """

    options: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    environment_option: str | None = "environment"

    def secrets(self) -> list[str]:
        """The values never to show (credentials from the environment).

        Returns
        -------
        list[str]
            The values.

        Examples
        --------
        >>> from pangeo_hpc.clusters.gateway import GatewaySpec
        >>> GatewaySpec(environment={"AWS_SECRET_ACCESS_KEY": "s3cr3t", "TZ": "UTC"}).secrets()
        ['s3cr3t']
        """
        return [v for k, v in self.environment.items() if k in SECRET_VARS and v]

    def shown(self) -> dict[str, Any]:
        """The options as they may be printed: credentials as ``***``.

        Returns
        -------
        dict[str, Any]
            The options.

        Examples
        --------
        >>> from pangeo_hpc.clusters.gateway import GatewaySpec
        >>> spec = GatewaySpec({"worker_cores": 2}, {"AWS_SECRET_ACCESS_KEY": "x", "TZ": "UTC"})
        >>> spec.shown()
        {'worker_cores': 2, 'environment': {'AWS_SECRET_ACCESS_KEY': '***', 'TZ': 'UTC'}}
        """
        env = {k: "***" if k in SECRET_VARS else v for k, v in self.environment.items()}
        out = dict(self.options)
        if self.environment_option is not None:
            out[self.environment_option] = env
        return out

    def __repr__(self) -> str:
        return f"GatewaySpec({self.shown()!r})"

    def hide(self, text: str) -> str:
        """``text`` with every credential replaced by ``***``.

        Parameters
        ----------
        text : str
            Any text (a message).

        Returns
        -------
        str
            The text.

        Examples
        --------
        >>> from pangeo_hpc.clusters.gateway import GatewaySpec
        >>> spec = GatewaySpec(environment={"AWS_SECRET_ACCESS_KEY": "s3cr3t"})
        >>> spec.hide("refused with key s3cr3t")
        'refused with key ***'
        """
        for secret in self.secrets():
            text = text.replace(secret, "***")
        return text


def gateway_spec(
    profile: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    environment_option: str | None = None,
) -> GatewaySpec:
    """The cluster options and worker variables of a ``kind: gateway`` profile.

    Parameters
    ----------
    profile : mapping, optional
        Profile options (:func:`pangeo_hpc.clusters.profiles.resolve`): ``options`` (the
        gateway's cluster options), ``environment`` (extra worker variables), any other
        key but ``kind`` and ``data_root`` as a cluster option too (``worker_cores=2``).
    environ : mapping, optional
        Where the passed ``AWS_*`` variables come from; default ``os.environ``.
    environment_option : str, optional
        The gateway's option for worker variables; default config
        ``pangeo-hpc.gateway.environment-option`` (None: the gateway has none, the workers
        keep the image's variables).

    Returns
    -------
    GatewaySpec

    Examples
    --------
    >>> from pangeo_hpc.clusters.gateway import gateway_spec
    >>> spec = gateway_spec({"worker_cores": 2, "environment": {"GDAL_CACHEMAX": "512"}},
    ...                     environ={"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "key"})
    >>> shown = spec.shown()["environment"]  # what may be printed
    >>> spec.options, shown["GDAL_CACHEMAX"], shown["AWS_SECRET_ACCESS_KEY"]
    ({'worker_cores': 2}, '512', '***')
    """
    profile = dict(profile or {})
    opts = dict(profile.get("options") or {})
    opts.update({k: v for k, v in profile.items() if k not in OWN_KEYS and v is not None})
    extra = profile.get("environment") or {}
    if not isinstance(extra, Mapping):
        raise InputError(
            f"a gateway profile's environment={extra!r} must be a mapping of variable names "
            "to values, e.g. {GDAL_CACHEMAX: '512'}",
            param="environment",
        )
    environ = os.environ if environ is None else environ
    env = {**worker_env(), **{k: environ[k] for k in PASSED_VARS if environ.get(k)}}
    env.update({str(k): str(v) for k, v in extra.items()})
    name = config.get("gateway.environment-option", environment_option)
    return GatewaySpec(opts, env, name)


def _gateway() -> Any:
    """A :class:`dask_gateway.Gateway` from dask-gateway's configuration."""
    require("gateway", "--cluster gateway")
    from dask_gateway import Gateway

    try:
        return Gateway()
    except ValueError as exc:  # no address configured
        raise InputError(
            f"{exc}: set gateway.address in ~/.config/dask/gateway.yaml or "
            "DASK_GATEWAY__ADDRESS=http://HOST:PORT (and gateway.auth.type as your gateway "
            "asks), or use another --cluster"
        ) from None


def new_gateway_cluster(spec: GatewaySpec) -> Any:
    """Ask the configured gateway for a cluster with ``spec``'s options (no workers yet).

    Ctrl-C and SIGTERM are held while the cluster is created, so that it is either not
    made or returned to a caller that shuts it down; any error message has the credentials
    hidden and no traceback chained (a server's message may repeat option values).

    Parameters
    ----------
    spec : GatewaySpec
        The cluster's options and workers' variables.

    Returns
    -------
    dask_gateway.GatewayCluster
        The new cluster, without workers.

    Raises
    ------
    ClusterError
        If the gateway cannot be reached or refuses the options (credentials hidden in
        the message).

    Examples
    --------
    >>> from pangeo_hpc.clusters.gateway import gateway_spec, new_gateway_cluster
    >>> cluster = new_gateway_cluster(gateway_spec({"worker_cores": 2}))  # doctest: +SKIP
    """
    gateway = _gateway()
    address = gateway.address
    cluster = None
    try:
        with deferred_signals():  # delivered at its end: the cluster is known by then
            try:
                options = gateway.cluster_options()
            except Exception as exc:
                raise ClusterError(
                    f"the dask-gateway at {address} did not answer ({spec.hide(str(exc))}): "
                    "check gateway.address, gateway.auth.type and that the gateway is up"
                ) from None
            _set_options(options, spec, address)
            try:
                cluster = gateway.new_cluster(options, shutdown_on_close=True)
            except Exception as exc:
                raise ClusterError(
                    f"the dask-gateway at {address} did not start a cluster: {spec.hide(str(exc))}"
                ) from None
    except BaseException:  # Ctrl-C or SIGTERM while it was made: shut it down
        if cluster is not None:
            close_gateway(cluster)
        raise
    finally:
        close_gateway(gateway)
    return cluster


def close_gateway(obj: Any) -> None:
    """Close a :class:`dask_gateway.Gateway`, or a ``GatewayCluster`` (shutting it down
    when it was made with ``shutdown_on_close``), once.

    dask-gateway 2026.3's ``Gateway.__del__`` closes it again, and with distributed
    2026.8 that second close reads the stopped event loop and raises: "Exception ignored
    in Gateway.__del__" with a traceback on stderr at exit. The closed client's loop
    runner is dropped so that ``__del__`` has nothing left to do.

    Parameters
    ----------
    obj : Any
        A ``Gateway`` or a ``GatewayCluster`` (closed ones are left alone).

    Examples
    --------
    >>> from pangeo_hpc.clusters.gateway import close_gateway
    >>> close_gateway(cluster)  # doctest: +SKIP
    """
    try:
        obj.close()
    finally:
        gateway = getattr(obj, "gateway", obj)
        gateway.__dict__.pop("_loop_runner", None)


def _set_options(options: Any, spec: GatewaySpec, address: str) -> None:
    """Put ``spec`` into the gateway's ``options``, refusing names it does not offer."""
    offered = sorted(options)
    wanted = dict(spec.options)
    if spec.environment_option is not None:
        if spec.environment_option not in offered:
            raise InputError(
                f"the dask-gateway at {address} offers no {spec.environment_option!r} cluster "
                f"option for the workers' variables (it offers {offered}): set "
                "pangeo-hpc.gateway.environment-option to its name, or to null to keep the "
                "image's variables (HDF5 locking, BLAS threads, S3 credentials)"
            )
        wanted[spec.environment_option] = {
            **(options[spec.environment_option] or {}),
            **spec.environment,
        }
    for key, value in wanted.items():
        if key not in offered:
            raise InputError(
                f"the dask-gateway at {address} offers no cluster option {key!r}: use one of "
                f"{offered} in the profile's options"
            )
        try:
            options[key] = value
        except (TypeError, ValueError) as exc:
            shown = spec.shown().get(key, value)
            raise InputError(
                f"cluster option {key}={shown!r} is refused by the dask-gateway at {address} "
                f"({spec.hide(str(exc))}): give a value it accepts in the profile"
            ) from None


def versions() -> dict[str, str]:
    """The versions that client and workers must share (run on a worker by
    :func:`check_versions`).

    Returns
    -------
    dict[str, str]
        Package name -> version (Python's among them).

    Examples
    --------
    >>> from pangeo_hpc.clusters.gateway import versions
    >>> sorted(versions())
    ['dask', 'distributed', 'numpy', 'pangeo_hpc', 'python']
    """
    out = {"python": platform.python_version()}
    for name in VERSIONED[1:]:
        out[name] = str(importlib.import_module(name).__version__)
    return out


def version_mismatch(here: Mapping[str, str], there: Mapping[str, str]) -> str | None:
    """One line naming what differs between this process (``here``) and a worker, or None.

    Parameters
    ----------
    here : Mapping[str, str]
        This process's :func:`versions`.
    there : Mapping[str, str]
        A worker's :func:`versions`.

    Returns
    -------
    str or None
        The line, or ``None`` when they agree.

    Examples
    --------
    >>> from pangeo_hpc.clusters.gateway import version_mismatch, versions
    >>> here = versions()
    >>> version_mismatch(here, here) is None
    True
    >>> print(version_mismatch(here, {**here, "python": "3.9.0"}))
    the gateway's workers run python 3.9.0 (here 3...): give the profile's options the image ...
    """
    diff = [k for k in VERSIONED if here.get(k) != there.get(k)]
    if not diff:
        return None
    named = ", ".join(
        f"{k.replace('_', '-')} {there.get(k, 'missing')} (here {here.get(k)})" for k in diff
    )
    return (
        f"the gateway's workers run {named}: give the profile's options the image or "
        "environment of this client's versions (or install the workers' versions here); "
        "mixed versions fail in ways hard to trace"
    )


def check_versions(client: Any) -> None:
    """Compare this process's :func:`versions` with one worker's; raise
    :class:`~pangeo_hpc.errors.InputError` naming any mismatch.

    Parameters
    ----------
    client : distributed.Client
        A client of the gateway cluster, with one worker at least.

    Raises
    ------
    InputError
        If a package's version differs between this process and the worker.

    Examples
    --------
    >>> from pangeo_hpc.clusters.gateway import check_versions
    >>> check_versions(client)  # doctest: +SKIP
    """
    workers = list(client.scheduler_info(n_workers=-1)["workers"])
    if not workers:
        return
    try:
        there = client.run(versions, workers=workers[:1])[workers[0]]
    except (ImportError, AttributeError) as exc:  # no pangeo_hpc on the worker
        raise InputError(
            f"the gateway's workers cannot run pangeo-hpc ({exc}): give the profile's options "
            f"an image or environment with pangeo-hpc {versions()['pangeo_hpc']}"
        ) from None
    message = version_mismatch(versions(), there)
    if message is not None:
        raise InputError(message)


def start_gateway(
    cluster: Any,
    *,
    workers: int | None = None,
    adapt: tuple[int, int] | None = None,
    timeout: float | None = None,
) -> Any:
    """Scale ``cluster`` to ``workers`` (default 1) or adapt it between ``adapt``'s bounds,
    wait for the first workers and check their versions; return the client (the caller
    closes both on error).

    Parameters
    ----------
    cluster : distributed.deploy.Cluster
        A gateway cluster (:func:`new_gateway_cluster`).
    workers : int, optional
        Workers to scale to; default 1.
    adapt : tuple[int, int], optional
        ``(min, max)`` workers to adapt between, instead of ``workers``.
    timeout : float, optional
        Seconds to wait for the first workers; default config
        ``pangeo-hpc.cluster.wait-timeout``.

    Returns
    -------
    distributed.Client
        The cluster's client.

    Raises
    ------
    ClusterError
        If the workers do not come within ``timeout``.

    Examples
    --------
    >>> from pangeo_hpc.clusters.gateway import gateway_spec, new_gateway_cluster, start_gateway
    >>> cluster = new_gateway_cluster(gateway_spec())  # doctest: +SKIP
    >>> client = start_gateway(cluster, adapt=(1, 10))  # doctest: +SKIP
    """
    if adapt is not None:
        cluster.adapt(minimum=adapt[0], maximum=adapt[1])
        first = adapt[0]
    else:
        first = workers or 1
        cluster.scale(first)
    client = cluster.get_client()
    try:
        wait = float(config.get("cluster.wait-timeout", timeout))
        try:
            client.wait_for_workers(first, timeout=wait)
        except TimeoutError:
            raise ClusterError(
                f"the dask-gateway cluster {cluster.name} has "
                f"{len(client.scheduler_info()['workers'])} of {first} workers after {wait:g} s: "
                "the gateway may be out of resources or the options too large; raise "
                "pangeo-hpc.cluster.wait-timeout or ask for fewer or smaller workers"
            ) from None
        check_versions(client)
    except BaseException:
        client.close()
        raise
    return client
