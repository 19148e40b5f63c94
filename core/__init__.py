"""The words every stage shares and nothing else: the vocabulary (`terms`), the user-facing
errors and exit codes (`errors`), input limits (`limits`), shape arithmetic (`shapes`).
Modules here import only each other, so any stage may import them."""
