from servotool.cli.app import main

main()
