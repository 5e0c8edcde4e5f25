"""The file spark-submit runs for timeweave jobs; kept alone in this directory on purpose.

spark-submit puts the application's directory first on ``sys.path``; with no sibling modules here,
nothing can shadow a top-level import of the job.
"""
