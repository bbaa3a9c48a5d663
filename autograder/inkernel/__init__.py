"""Code that runs inside the grading sandbox: the fork server and the integrity guard."""
