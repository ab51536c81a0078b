import click

@click.group()
def main():
    """callscope"""
