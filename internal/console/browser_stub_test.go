package console_test

func closeBrowser() {}
