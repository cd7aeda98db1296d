"""What the graph scripts share: a parser for one device and the run of a recipe on it."""


def one_device_parser(config_cls, description):
    """A graph script's parser: ``config_cls``'s flags and ``--gpus``/``--dtype`` for the one device
    the script hands its recipe (float32 only: the graph kernels are float32)."""
    from ..utils.devices import add_device_arguments
    p = config_cls.build_parser(description)
    add_device_arguments(p, dtypes=("float32",), why=" (the graph kernels are float32)")
    return p


def run_one_device_recipe(parser, argv, config_cls, train, script, report):
    """A graph script's ``main``: parse ``argv``, resolve the one device, build ``config_cls`` and
    run ``train(cfg, comm, log=, ctx=)`` inside its output folder (a run that saved nothing leaves
    nothing); ``report(res)`` is the final line (None: nothing to say), printed by rank 0."""
    args = vars(parser.parse_args(argv))
    from ..utils.devices import resolve_devices, single_device
    ctx, _ = resolve_devices(args.pop("gpus"), args.pop("dtype"))
    device = single_device(ctx, script)
    cfg = config_cls.from_sources(args)
    from ..distributed import get_communicator
    comm = get_communicator()
    log = print if comm.rank == 0 or cfg.elastic else (lambda m: None)  # elastic: the recipe checks
    from ..utils.fileio import output_folder
    with output_folder(cfg.out):
        res = train(cfg, comm, log=log, ctx=device)   # the worker's device
    line = report(res)
    if line is not None and res.get("rank", 0) == 0:
        log(line)
    return 0
