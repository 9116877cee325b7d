"""The shared corpus' cases (../shared/corpus/cases.tsv) for the scripts beside this one."""
import os


def corpus_dir():
    """../shared/corpus, from the repository root (the scripts' working directory)."""
    return os.path.normpath(os.path.join(os.getcwd(), "../shared/corpus"))


def read_cases(corpus):
    """The rows of cases.tsv in file order, each a dict by column name."""
    with open(os.path.join(corpus, "cases.tsv"), encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        return [dict(zip(header, line.rstrip("\n").split("\t"))) for line in f]


def template_args(row):
    """`antiopa template` arguments of a case, relative to the corpus directory."""
    args = ["template", row["release"], row["chart_dir"], "--namespace", row["namespace"]]
    if row["values"] != "-":
        args += ["-f", row["values"]]
    return args
