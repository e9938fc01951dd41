"""The ``stylebench eval`` job: models x suite datasets x tasks as resumable cells, then results,
aggregate scores and reports (see ``runner`` for cells, ``results`` for the output files)."""
